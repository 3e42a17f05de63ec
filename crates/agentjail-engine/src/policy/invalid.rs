//! A policy value the loader refuses: the key (and item) to point at, what is wrong and
//! how to fix it; the loader turns it into `PolicyError::Invalid` with the line. A leaf of
//! the policy module: validate.rs, network.rs and credentials.rs each report through it
//! without importing one another for it.

pub(crate) struct Invalid {
    pub(crate) key: String,
    /// An array element or table key under `key` to point at.
    pub(crate) item: Option<String>,
    pub(crate) message: String,
    pub(crate) hint: String,
}

pub(crate) fn invalid_owned(key: &str, message: String, hint: String) -> Invalid {
    invalid(key, message, hint)
}

/// The loader's error for what `policy::python` refused.
pub(crate) fn refused(r: super::python::Refused) -> Invalid {
    Invalid {
        key: r.key.into(),
        item: r.item,
        message: r.message,
        hint: r.hint,
    }
}

pub(crate) fn invalid(key: &str, message: impl Into<String>, hint: impl Into<String>) -> Invalid {
    Invalid {
        key: key.into(),
        item: None,
        message: message.into(),
        hint: hint.into(),
    }
}

pub(crate) fn invalid_item(
    key: &str,
    item: &str,
    message: impl Into<String>,
    hint: &str,
) -> Invalid {
    Invalid {
        key: key.into(),
        item: Some(item.into()),
        message: message.into(),
        hint: hint.into(),
    }
}
