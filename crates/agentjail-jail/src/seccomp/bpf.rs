//! The BPF assembly: the two ABI checks (another architecture, the x32 bit) and then a
//! binary search over the numbers that have a verdict, each leaf its verdict's block of
//! argument checks, every number the search does not hold getting the default. Separate
//! from the verdicts (`verdicts.rs`) because the layout is a performance argument of its
//! own (the kernel emulates the filter for every number at install: a tree, not a row) that
//! must not change a single answer, which the tests check with a BPF interpreter.

use super::verdicts::Verdict;
use super::Filter;
use crate::SetupError;

pub(super) const X32_SYSCALL_BIT: u32 = 0x4000_0000;

pub(super) const BPF_LD_W_ABS: u16 = (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16;
pub(super) const BPF_RET_K: u16 = (libc::BPF_RET | libc::BPF_K) as u16;
pub(super) const BPF_JEQ_K: u16 = (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16;
pub(super) const BPF_JGE_K: u16 = (libc::BPF_JMP | libc::BPF_JGE | libc::BPF_K) as u16;
pub(super) const BPF_JSET_K: u16 = (libc::BPF_JMP | libc::BPF_JSET | libc::BPF_K) as u16;
pub(super) const BPF_JA: u16 = (libc::BPF_JMP | libc::BPF_JA) as u16;
pub(super) const BPF_AND_K: u16 = (libc::BPF_ALU | libc::BPF_AND | libc::BPF_K) as u16;
/// offsetof(struct seccomp_data, nr) and (.., arch).
const DATA_NR: u32 = 0;
const DATA_ARCH: u32 = 4;
/// offsetof(struct seccomp_data, args[i]), low 32 bits (little endian).
fn data_arg_lo(i: u8) -> u32 {
    16 + 8 * u32::from(i)
}
pub(super) const AUDIT_ARCH_X86_64: u32 = 62 | 0x8000_0000 | 0x4000_0000;

fn insn(code: u16, jt: u8, jf: u8, k: u32) -> libc::sock_filter {
    libc::sock_filter { code, jt, jf, k }
}

/// Numbers per leaf of the search tree: past this, a `JGE` node splits the range.
const LEAF_SIZE: usize = 4;

/// The block for one verdict, entered with the syscall number in A; always ends in a RET.
fn verdict_block(v: &Verdict) -> Vec<libc::sock_filter> {
    match v {
        Verdict::Always(k) => vec![insn(BPF_RET_K, 0, 0, *k)],
        Verdict::Args { checks, otherwise } => {
            let mut out = Vec::new();
            let mut loaded: Option<(u8, u32)> = None;
            for c in checks {
                if loaded != Some((c.arg, c.mask)) {
                    out.push(insn(BPF_LD_W_ABS, 0, 0, data_arg_lo(c.arg)));
                    if c.mask != u32::MAX {
                        out.push(insn(BPF_AND_K, 0, 0, c.mask));
                    }
                    loaded = Some((c.arg, c.mask));
                }
                out.push(insn(BPF_JEQ_K, 0, 1, c.value));
                out.push(insn(BPF_RET_K, 0, 0, c.action));
            }
            out.push(insn(BPF_RET_K, 0, 0, *otherwise));
            out
        }
    }
}

/// A binary search over `entries` (sorted by number) with the number in A. Every jump is
/// forward: an inner node is `JGE mid` followed by a long `JA` over the left half; a leaf
/// compares up to [`LEAF_SIZE`] numbers, each followed by its verdict block, and ends in
/// `RET USER_NOTIF` for numbers it does not hold.
///
/// Why a tree and not one compare per syscall in a row: when a filter is installed the
/// kernel emulates it once for every syscall number to fill its "always allowed" cache
/// (`seccomp_cache_prepare_bitmap`). For a linear chain that walks the chain for each of the
/// ~470 numbers (the whole chain for every number the list does not hold); a tree is ~10
/// steps each. The same holds at run time for every syscall that is not cached. The
/// decisions are identical; `tests::tree_matches_reference` checks every number.
fn search(
    entries: &[(u32, Verdict)],
    default: u32,
    out: &mut Vec<libc::sock_filter>,
) -> Result<(), SetupError> {
    let too_far = || {
        SetupError::new(
            "seccomp compile",
            None,
            "an argument check block is longer than a BPF conditional jump can skip (255); this is a bug in agentjail's syscall groups",
        )
    };
    if entries.len() <= LEAF_SIZE {
        for (nr, v) in entries {
            let block = verdict_block(v);
            let skip = u8::try_from(block.len()).map_err(|_| too_far())?;
            out.push(insn(BPF_JEQ_K, 0, skip, *nr));
            out.extend(block);
        }
        out.push(insn(BPF_RET_K, 0, 0, default));
        return Ok(());
    }
    let mid = entries.len() / 2;
    let mut left = Vec::new();
    search(&entries[..mid], default, &mut left)?;
    // A >= entries[mid]: fall into the JA that jumps over the left half; else skip it.
    out.push(insn(BPF_JGE_K, 0, 1, entries[mid].0));
    out.push(insn(BPF_JA, 0, 0, left.len() as u32));
    out.extend(left);
    search(&entries[mid..], default, out)
}

/// The two ABI checks, then the search over `entries`; numbers it does not hold get
/// `default`. Both the program's filter and the init's are built here.
pub(super) fn program(entries: &[(u32, Verdict)], default: u32) -> Result<Filter, SetupError> {
    let mut program = vec![
        // Another architecture (i386 via int 0x80, ...): its numbers mean other syscalls.
        insn(BPF_LD_W_ABS, 0, 0, DATA_ARCH),
        insn(BPF_JEQ_K, 1, 0, AUDIT_ARCH_X86_64),
        insn(BPF_RET_K, 0, 0, libc::SECCOMP_RET_KILL_PROCESS),
        // x32 ABI numbers (bit 30): kill before they could reach the notifier unnamed.
        insn(BPF_LD_W_ABS, 0, 0, DATA_NR),
        insn(BPF_JSET_K, 0, 1, X32_SYSCALL_BIT),
        insn(BPF_RET_K, 0, 0, libc::SECCOMP_RET_KILL_PROCESS),
    ];
    search(entries, default, &mut program)?;
    if program.len() > libc::BPF_MAXINSNS as usize {
        return Err(SetupError::new(
            "seccomp compile",
            None,
            format!(
                "filter has {} instructions, more than the kernel's {}; enable fewer groups",
                program.len(),
                libc::BPF_MAXINSNS
            ),
        ));
    }
    Ok(Filter { program })
}
