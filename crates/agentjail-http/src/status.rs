//! The one table from an engine error's code to its HTTP status (docs/REFERENCE.md, the
//! HTTP front end's errors). Exhaustive: a new engine code does not build until it has a
//! status here.

use agentjail_engine::engine::ErrorCode;
use hyper::StatusCode;

pub fn of(code: ErrorCode) -> StatusCode {
    match code {
        ErrorCode::UnknownSession | ErrorCode::UnknownWorkspace | ErrorCode::UnknownCommand => {
            StatusCode::NOT_FOUND
        }
        ErrorCode::SessionBusy | ErrorCode::WorkspaceBusy | ErrorCode::HostDirInUse => {
            StatusCode::CONFLICT
        }
        ErrorCode::WorkspaceEnded => StatusCode::GONE,
        ErrorCode::TooManySessions | ErrorCode::TooManyWorkspaces => StatusCode::TOO_MANY_REQUESTS,
        ErrorCode::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
        ErrorCode::BadRequest
        | ErrorCode::BadEnv
        | ErrorCode::BadFiles
        | ErrorCode::BadHostDir
        | ErrorCode::PutRefused
        | ErrorCode::PathRefused => StatusCode::BAD_REQUEST,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The table as the docs state it, code by code (a status changed by accident is a
    /// changed contract).
    #[test]
    fn every_engine_code_has_its_documented_status() {
        let want = |c: ErrorCode| match c.as_str() {
            "unknown_session" | "unknown_workspace" | "unknown_command" => 404,
            "session_busy" | "workspace_busy" | "host_dir_in_use" => 409,
            "workspace_ended" => 410,
            "too_many_sessions" | "too_many_workspaces" => 429,
            "unavailable" => 503,
            "bad_request" | "bad_env" | "bad_files" | "bad_host_dir" | "put_refused"
            | "path_refused" => 400,
            other => panic!("{other}: a code the table's test does not know"),
        };
        for c in ErrorCode::ALL {
            assert_eq!(of(c).as_u16(), want(c), "{c}");
        }
    }
}
