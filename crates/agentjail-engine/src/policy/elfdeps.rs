//! Whether the interpreter can start inside the jail: its ELF program interpreter
//! (PT_INTERP, the dynamic loader) and every shared library it needs (DT_NEEDED, the
//! libraries' own needs in turn) must be reachable through the policy's read-only binds. A
//! Python whose `libpython` lies outside them passes every other check and then fails in
//! the jail with the loader's "error while loading shared libraries" (exit 127), which
//! would read as the agent's code failing.
//!
//! Resolved as ld.so does in the jail, which has no /etc/ld.so.cache and no
//! LD_LIBRARY_PATH: a name with a slash is a path; otherwise DT_RPATH of the object and of
//! the executable (only when the object has no DT_RUNPATH), then DT_RUNPATH of the object
//! (`$ORIGIN` expanded to its directory), then the default directories. A library found in
//! none of these on the host is not decided here: it may be found through the host's cache
//! at run time (then the runtime check in the pipeline names it,
//! `sandbox_unavailable:interpreter`).
//!
//! The parser reads only the ELF header, the program headers, the dynamic section and its
//! string table, each bounded, for x86_64 ELF64 little-endian files (the only ABI agentjail
//! runs).

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

/// The directories ld.so searches last (glibc's system directories on x86_64, multiarch
/// first, as Debian builds it; /lib64 and /usr/lib64 for other distributions).
pub const DEFAULT_DIRS: &[&str] = &[
    "/lib/x86_64-linux-gnu",
    "/usr/lib/x86_64-linux-gnu",
    "/lib64",
    "/usr/lib64",
    "/lib",
    "/usr/lib",
];

/// What the loader needs of one ELF file.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Dynamic {
    pub interp: Option<String>,
    pub needed: Vec<String>,
    pub rpath: Vec<String>,
    pub runpath: Vec<String>,
}

const MAX_PHNUM: u64 = 128;
const MAX_DYN: u64 = 4096;
const MAX_STRTAB: u64 = 1 << 20;
const MAX_STRING: usize = 4096;
const MAX_OBJECTS: usize = 256;

fn u16_at(b: &[u8], o: usize) -> u64 {
    u64::from(u16::from_le_bytes([b[o], b[o + 1]]))
}
fn u32_at(b: &[u8], o: usize) -> u64 {
    u64::from(u32::from_le_bytes(b[o..o + 4].try_into().unwrap_or([0; 4])))
}
fn u64_at(b: &[u8], o: usize) -> u64 {
    u64::from_le_bytes(b[o..o + 8].try_into().unwrap_or([0; 8]))
}

fn read_at(f: &mut File, offset: u64, len: u64) -> std::io::Result<Vec<u8>> {
    f.seek(SeekFrom::Start(offset))?;
    let mut buf = vec![0u8; len as usize];
    f.read_exact(&mut buf)?;
    Ok(buf)
}

/// Why an ELF file's loader needs could not be read: the file and what went wrong.
/// `Display` is "<path>: <problem>".
#[derive(Debug)]
pub struct ElfError {
    pub path: PathBuf,
    pub problem: ElfProblem,
}

/// What went wrong reading an ELF file.
#[derive(Debug)]
pub enum ElfProblem {
    /// Opening or reading it failed.
    Io(std::io::Error),
    /// Program headers of the wrong size or too many of them.
    ProgramHeaders,
    /// A dynamic section larger than the bound.
    DynamicSection,
    /// Dynamic entries name strings but there is no DT_STRTAB.
    NoStringTable,
    /// The string table's address is in no load segment.
    StringTableOutsideFile,
    /// The string table is empty or larger than the bound.
    StringTable,
    /// A string's offset is past the string table.
    StringOutsideTable,
}

impl std::fmt::Display for ElfProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ElfProblem::Io(e) => return write!(f, "{e}"),
            ElfProblem::ProgramHeaders => "program headers out of bounds",
            ElfProblem::DynamicSection => "dynamic section out of bounds",
            ElfProblem::NoStringTable => "no string table",
            ElfProblem::StringTableOutsideFile => "string table outside the file",
            ElfProblem::StringTable => "string table out of bounds",
            ElfProblem::StringOutsideTable => "string outside the string table",
        })
    }
}

impl std::fmt::Display for ElfError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.path.display(), self.problem)
    }
}

impl std::error::Error for ElfError {}

/// Parse `path`'s loader needs. Ok(None): not an x86_64 ELF64 file (nothing to check);
/// Err: an ELF file that cannot be read or whose headers are out of bounds.
pub fn parse(path: &Path) -> Result<Option<Dynamic>, ElfError> {
    let e = |problem| ElfError {
        path: path.to_path_buf(),
        problem,
    };
    let mut f = File::open(path).map_err(|x| e(ElfProblem::Io(x)))?;
    let mut eh = [0u8; 64];
    if f.read_exact(&mut eh).is_err() || &eh[..4] != b"\x7fELF" {
        return Ok(None);
    }
    // ELFCLASS64, little-endian, EM_X86_64.
    if eh[4] != 2 || eh[5] != 1 || u16_at(&eh, 18) != 62 {
        return Ok(None);
    }
    let (phoff, phentsize, phnum) = (u64_at(&eh, 32), u16_at(&eh, 54), u16_at(&eh, 56));
    if phentsize != 56 || phnum > MAX_PHNUM {
        return Err(e(ElfProblem::ProgramHeaders));
    }
    let ph = read_at(&mut f, phoff, phentsize * phnum).map_err(|x| e(ElfProblem::Io(x)))?;
    let mut d = Dynamic::default();
    let mut loads = Vec::new(); // (vaddr, offset, filesz)
    let mut dynamic = None; // (offset, filesz)
    for i in 0..phnum as usize {
        let p = &ph[i * 56..(i + 1) * 56];
        let (kind, offset, vaddr, filesz) =
            (u32_at(p, 0), u64_at(p, 8), u64_at(p, 16), u64_at(p, 32));
        match kind {
            1 => loads.push((vaddr, offset, filesz)),
            2 => dynamic = Some((offset, filesz)),
            3 if filesz <= MAX_STRING as u64 => {
                let s = read_at(&mut f, offset, filesz).map_err(|x| e(ElfProblem::Io(x)))?;
                let s = s.split(|&c| c == 0).next().unwrap_or_default();
                d.interp = Some(String::from_utf8_lossy(s).into_owned());
            }
            _ => {}
        }
    }
    let Some(dynamic) = dynamic else {
        return Ok(Some(d)); // static: needs nothing
    };
    dynamic_entries(&mut f, dynamic, &loads, &mut d).map_err(e)?;
    Ok(Some(d))
}

/// The dynamic section at (offset, size): its DT_NEEDED, DT_RPATH and DT_RUNPATH strings
/// into `d`, read from the string table (found through the load segments `loads`).
fn dynamic_entries(
    f: &mut File,
    (dyn_off, dyn_size): (u64, u64),
    loads: &[(u64, u64, u64)],
    d: &mut Dynamic,
) -> Result<(), ElfProblem> {
    if dyn_size / 16 > MAX_DYN {
        return Err(ElfProblem::DynamicSection);
    }
    let dy = read_at(f, dyn_off, dyn_size - dyn_size % 16).map_err(ElfProblem::Io)?;
    let (mut strtab, mut strsz) = (None, 0);
    let mut entries = Vec::new();
    for c in dy.chunks_exact(16) {
        let (tag, val) = (u64_at(c, 0), u64_at(c, 8));
        match tag {
            0 => break,
            5 => strtab = Some(val),
            10 => strsz = val,
            1 | 15 | 29 => entries.push((tag, val)),
            _ => {}
        }
    }
    if entries.is_empty() {
        return Ok(());
    }
    let strtab = strtab.ok_or(ElfProblem::NoStringTable)?;
    // The string table's address is virtual: the load segment holding it gives its offset.
    let off = loads
        .iter()
        .find(|(v, _, sz)| strtab >= *v && strtab < v.saturating_add(*sz))
        .map(|(v, o, _)| strtab - v + o)
        .ok_or(ElfProblem::StringTableOutsideFile)?;
    if strsz == 0 || strsz > MAX_STRTAB {
        return Err(ElfProblem::StringTable);
    }
    let table = read_at(f, off, strsz).map_err(ElfProblem::Io)?;
    let string = |i: u64| -> Result<String, ElfProblem> {
        let start = usize::try_from(i).ok().filter(|&s| s < table.len());
        let start = start.ok_or(ElfProblem::StringOutsideTable)?;
        let s = table[start..].split(|&c| c == 0).next().unwrap_or_default();
        Ok(String::from_utf8_lossy(&s[..s.len().min(MAX_STRING)]).into_owned())
    };
    for (tag, val) in entries {
        let s = string(val)?;
        match tag {
            1 => d.needed.push(s),
            15 => d
                .rpath
                .extend(s.split(':').filter(|x| !x.is_empty()).map(str::to_string)),
            _ => d
                .runpath
                .extend(s.split(':').filter(|x| !x.is_empty()).map(str::to_string)),
        }
    }
    Ok(())
}

/// A needed file the jail lacks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Missing {
    /// The DT_NEEDED name, or the PT_INTERP path.
    pub name: String,
    /// Who needs it.
    pub by: PathBuf,
    /// Where ld.so finds it on the host.
    pub host_path: PathBuf,
    /// The directory to bind (the one it is found in, canonical).
    pub bind: String,
}

/// Whether host `path` can be opened in the jail: the path as the loader names it starts
/// under a bind (the jail recreates a bind that is a symlink as that symlink), and the file
/// it leads to is under a bind that is a real directory at its own path.
fn reachable(path: &Path, binds: &[String]) -> bool {
    let named = normalise(path);
    if !binds.iter().any(|b| super::validate::is_under(&named, b)) {
        return false;
    }
    let Ok(real) = std::fs::canonicalize(path) else {
        return false;
    };
    let real = real.to_string_lossy();
    binds.iter().any(|b| {
        std::fs::canonicalize(b).is_ok_and(|c| c.to_string_lossy() == b.as_str())
            && super::validate::is_under(&real, b)
    })
}

/// `path` with `.` and `..` resolved by name (the loader's `$ORIGIN/../lib`).
fn normalise(path: &Path) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for c in path.to_str().unwrap_or_default().split('/') {
        match c {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            c => parts.push(c),
        }
    }
    format!("/{}", parts.join("/"))
}

fn expand_origin(dir: &str, object: &Path) -> PathBuf {
    let origin = object
        .parent()
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_else(|| "/".into());
    PathBuf::from(
        dir.replace("${ORIGIN}", &origin)
            .replace("$ORIGIN", &origin),
    )
}

/// Where ld.so finds `name`, needed by `object` (of executable `exe`): the first candidate
/// on the host, and the first one the jail has (ld.so in the jail skips a directory the
/// jail lacks and tries the next), each None when there is none.
fn locate(
    name: &str,
    (object, d): (&Path, &Dynamic),
    (exe_path, exe): (&Path, &Dynamic),
    binds: &[String],
) -> (Option<PathBuf>, Option<PathBuf>) {
    let candidates: Vec<PathBuf> = if name.contains('/') {
        vec![PathBuf::from(name)]
    } else {
        let mut dirs: Vec<PathBuf> = Vec::new();
        if d.runpath.is_empty() {
            dirs.extend(d.rpath.iter().map(|r| expand_origin(r, object)));
            dirs.extend(exe.rpath.iter().map(|r| expand_origin(r, exe_path)));
        }
        dirs.extend(d.runpath.iter().map(|r| expand_origin(r, object)));
        dirs.extend(DEFAULT_DIRS.iter().map(PathBuf::from));
        dirs.into_iter().map(|dir| dir.join(name)).collect()
    };
    let on_host: Vec<PathBuf> = candidates.into_iter().filter(|p| p.is_file()).collect();
    let in_jail = on_host.iter().find(|p| reachable(p, binds)).cloned();
    (on_host.into_iter().next(), in_jail)
}

/// Check `exe` and everything it loads against `binds`: the first file the jail lacks, or
/// None (all reachable, or what is not found on the host is left to the run).
pub fn first_missing(exe: &Path, binds: &[String]) -> Result<Option<Missing>, ElfError> {
    let Some(top) = parse(exe)? else {
        return Ok(None);
    };
    let dir_of = |p: &Path| {
        let real = std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
        real.parent()
            .map(|d| d.to_string_lossy().into_owned())
            .unwrap_or_else(|| "/".into())
    };
    if let Some(interp) = &top.interp {
        let p = PathBuf::from(interp);
        if p.is_file() && !reachable(&p, binds) {
            return Ok(Some(Missing {
                name: interp.clone(),
                by: exe.to_path_buf(),
                bind: dir_of(&p),
                host_path: p,
            }));
        }
    }
    let mut seen: Vec<PathBuf> = vec![exe.to_path_buf()];
    let mut queue: Vec<(PathBuf, Dynamic)> = vec![(exe.to_path_buf(), top.clone())];
    while let Some((object, d)) = queue.pop() {
        for name in &d.needed {
            let found = match locate(name, (&object, &d), (exe, &top), binds) {
                (_, Some(in_jail)) => in_jail,
                (Some(host), None) => {
                    return Ok(Some(Missing {
                        name: name.clone(),
                        by: object.clone(),
                        bind: dir_of(&host),
                        host_path: PathBuf::from(normalise(&host)),
                    }))
                }
                // Not on the host by these rules: left to the run.
                (None, None) => continue,
            };
            if seen.contains(&found) || seen.len() >= MAX_OBJECTS {
                continue;
            }
            seen.push(found.clone());
            if let Some(dd) = parse(&found)? {
                queue.push((found, dd));
            }
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_text() {
        let e = parse(Path::new("/nonexistent/agentjail-elf")).unwrap_err();
        assert_eq!(
            e.to_string(),
            "/nonexistent/agentjail-elf: No such file or directory (os error 2)"
        );
    }

    #[test]
    fn the_hosts_python_needs_its_loader_and_libc() {
        let py = std::fs::canonicalize("/usr/bin/python3").expect("python3");
        let d = parse(&py).expect("parse").expect("an ELF file");
        assert!(
            d.interp.as_deref().is_some_and(|i| i.contains("ld-linux")),
            "{d:?}"
        );
        assert!(d.needed.iter().any(|n| n.starts_with("libc.so")), "{d:?}");
        let binds: Vec<String> = ["/usr", "/bin", "/lib", "/lib64"]
            .map(String::from)
            .to_vec();
        assert!(matches!(first_missing(&py, &binds), Ok(None)));
        // /lib (first in the search) unbound: ld.so in the jail goes on to /usr/lib/...
        let usr: Vec<String> = ["/usr", "/lib64"].map(String::from).to_vec();
        assert!(matches!(first_missing(&py, &usr), Ok(None)));
        let m = first_missing(&py, &["/usr/bin".to_string()])
            .expect("ok")
            .expect("missing");
        assert!(m.host_path.is_absolute(), "{m:?}");
    }

    #[test]
    fn not_elf_is_not_checked() {
        let t = tempfile::NamedTempFile::new().expect("tmp");
        std::fs::write(t.path(), b"#!/bin/sh\n").expect("write");
        assert!(matches!(parse(t.path()), Ok(None)));
    }

    #[test]
    fn origin_is_the_objects_directory() {
        assert_eq!(
            expand_origin("$ORIGIN/../lib", Path::new("/opt/p/bin/python3")),
            PathBuf::from("/opt/p/bin/../lib")
        );
    }
}
