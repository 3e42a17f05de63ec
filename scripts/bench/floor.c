/*
 * floor: the kernel's own price for agentjail's building blocks, with nothing else.
 *
 *   floor [--seccomp-allow N] PROGRAM [ARGS...]
 *
 * One clone3 with the seven namespaces agentjail creates (user, mount, pid, net, ipc, uts,
 * cgroup), the parent writes setgroups/uid_map/gid_map, the child builds the same minimal
 * root agentjail's default plan does (tmpfs root, read-only /usr bind, lib symlinks, fresh
 * /proc, tmpfs /tmp), pivot_root, detaches the old root, drops to the mapped uid, applies a
 * landlock ruleset (read+exec on /usr, write on /tmp) and a seccomp allowlist of N syscalls
 * (default 139, as many as agentjail's default policy), and execs PROGRAM.
 *
 * What it leaves out on purpose (agentjail does these, bubblewrap does not): the cgroup,
 * the /proc masks, device nodes, the capability and rlimit work, the supervising init, the
 * record. So this is a lower bound for "the same isolation", not a competitor: it is in the
 * benchmark to show how much of a launch is kernel work no launcher can avoid, which bounds
 * what any target ratio against bubblewrap can ask for.
 *
 * Error handling is minimal: any failing step exits 126 with the step's name on stderr, and
 * the benchmark counts that launch as failed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/landlock.h>
#include <linux/sched.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define DIE(what)                                                                          \
    do {                                                                                   \
        fprintf(stderr, "floor: %s: %s\n", what, strerror(errno));                        \
        _exit(126);                                                                        \
    } while (0)

static void write_file(const char *path, const char *s) {
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0 || write(fd, s, strlen(s)) != (ssize_t)strlen(s))
        DIE(path);
    close(fd);
}

static void landlock(void) {
    struct landlock_ruleset_attr attr = {
        .handled_access_fs = LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE |
                             LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR |
                             LANDLOCK_ACCESS_FS_MAKE_REG | LANDLOCK_ACCESS_FS_MAKE_DIR |
                             LANDLOCK_ACCESS_FS_REMOVE_FILE | LANDLOCK_ACCESS_FS_REMOVE_DIR,
    };
    int rs = syscall(SYS_landlock_create_ruleset, &attr, sizeof attr, 0);
    if (rs < 0)
        DIE("landlock_create_ruleset");
    struct {
        const char *path;
        __u64 access;
    } rules[] = {
        {"/usr", LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_READ_FILE |
                     LANDLOCK_ACCESS_FS_READ_DIR},
        {"/tmp", LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_READ_FILE |
                     LANDLOCK_ACCESS_FS_READ_DIR | LANDLOCK_ACCESS_FS_MAKE_REG |
                     LANDLOCK_ACCESS_FS_MAKE_DIR | LANDLOCK_ACCESS_FS_REMOVE_FILE |
                     LANDLOCK_ACCESS_FS_REMOVE_DIR},
        {"/proc", LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR},
    };
    for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++) {
        struct landlock_path_beneath_attr pb = {.allowed_access = rules[i].access};
        pb.parent_fd = open(rules[i].path, O_PATH | O_CLOEXEC);
        if (pb.parent_fd < 0)
            DIE(rules[i].path);
        if (syscall(SYS_landlock_add_rule, rs, LANDLOCK_RULE_PATH_BENEATH, &pb, 0))
            DIE("landlock_add_rule");
        close(pb.parent_fd);
    }
    if (syscall(SYS_landlock_restrict_self, rs, 0))
        DIE("landlock_restrict_self");
    close(rs);
}

/* An allowlist of n syscall numbers as a binary search tree (what agentjail generates; a
 * row of compares costs far more at install, when the kernel emulates the filter for every
 * number to fill its allow cache). Every other number returns ERRNO(ENOSYS). The allowed
 * set: every number below 2n not divisible by 3, and the ones /bin/true, ld.so and execve
 * need. */
static struct sock_filter prog_buf[4096];
static unsigned prog_len;

static void emit(struct sock_filter f) {
    if (prog_len >= sizeof prog_buf / sizeof prog_buf[0]) {
        errno = E2BIG;
        DIE("seccomp filter too long");
    }
    prog_buf[prog_len++] = f;
}

static void tree(const unsigned *nr, unsigned n) {
    if (n <= 4) {
        for (unsigned i = 0; i < n; i++) {
            emit((struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, nr[i], 0, 1));
            emit((struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
        }
        emit((struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS));
        return;
    }
    unsigned mid = n / 2;
    emit((struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, nr[mid], 0, 1));
    unsigned ja = prog_len;
    emit((struct sock_filter)BPF_STMT(BPF_JMP | BPF_JA, 0));
    tree(nr, mid);
    prog_buf[ja].k = prog_len - ja - 1;
    tree(nr + mid, n - mid);
}

static int cmp_u(const void *a, const void *b) {
    unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;
    return (x > y) - (x < y);
}

static void seccomp(unsigned n) {
    static const unsigned needed[] = {
        SYS_read, SYS_write, SYS_close, SYS_fstat, SYS_mmap, SYS_mprotect, SYS_munmap, SYS_brk,
        SYS_access, SYS_execve, SYS_arch_prctl, SYS_exit_group, SYS_openat, SYS_newfstatat,
        SYS_set_tid_address, SYS_set_robust_list, SYS_prlimit64, SYS_getrandom, SYS_rseq,
        SYS_pread64, SYS_futex, SYS_getdents64, SYS_lseek, SYS_ioctl, SYS_rt_sigaction,
        SYS_rt_sigprocmask, SYS_getcwd, SYS_readlink, SYS_fcntl, SYS_dup, SYS_getpid,
        SYS_getuid, SYS_geteuid, SYS_getgid, SYS_getegid, SYS_sysinfo, SYS_clock_gettime,
        SYS_gettid, SYS_sched_getaffinity, SYS_madvise, SYS_mremap, SYS_statx, SYS_exit,
    };
    unsigned nr[1024], count = 0;
    for (unsigned i = 0; i < sizeof needed / sizeof needed[0]; i++)
        nr[count++] = needed[i];
    /* add spread numbers until the set (needed ones included) holds n distinct numbers */
    unsigned uniq = 0;
    for (unsigned x = 0; x < 1000 && count < 1024; x++) {
        qsort(nr, count, sizeof nr[0], cmp_u);
        uniq = 0;
        for (unsigned i = 0; i < count; i++)
            if (uniq == 0 || nr[uniq - 1] != nr[i])
                nr[uniq++] = nr[i];
        count = uniq;
        if (uniq >= n)
            break;
        if (x % 3 != 0)
            nr[count++] = x;
    }
    prog_len = 0;
    emit((struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, 4)); /* arch */
    emit((struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0xc000003e, 1, 0));
    emit((struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS));
    emit((struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, 0)); /* nr */
    tree(nr, uniq);
    struct sock_fprog prog = {.len = (unsigned short)prog_len, .filter = prog_buf};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
        DIE("no_new_privs");
    if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog))
        DIE("seccomp");
}

int main(int argc, char **argv) {
    unsigned allowed = 139; /* agentjail's default policy allows 139 syscalls */
    int a = 1;
    if (a + 1 < argc && strcmp(argv[a], "--seccomp-allow") == 0) {
        allowed = (unsigned)atoi(argv[a + 1]);
        a += 2;
    }
    if (a >= argc) {
        fprintf(stderr, "usage: floor [--seccomp-allow N] PROGRAM [ARGS...]\n");
        return 2;
    }
    uid_t uid = getuid();
    gid_t gid = getgid();
    int sync_pipe[2];
    if (pipe2(sync_pipe, O_CLOEXEC))
        DIE("pipe2");
    int pidfd = -1;
    struct clone_args ca = {
        .flags = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC |
                 CLONE_NEWUTS | CLONE_NEWCGROUP | CLONE_PIDFD,
        .pidfd = (uint64_t)(uintptr_t)&pidfd,
        .exit_signal = SIGCHLD,
    };
    long pid = syscall(SYS_clone3, &ca, sizeof ca);
    if (pid < 0)
        DIE("clone3");
    if (pid == 0) {
        char c;
        close(sync_pipe[1]);
        if (read(sync_pipe[0], &c, 1) != 1)
            _exit(126);
        if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL))
            DIE("make private");
        /* Build the root on a tmpfs mounted over /tmp (as agentjail does), then pivot. */
        if (mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,mode=0755"))
            DIE("tmpfs root");
        if (mkdir("/tmp/usr", 0755) || mkdir("/tmp/proc", 0755) || mkdir("/tmp/tmp", 01777) ||
            mkdir("/tmp/old", 0755))
            DIE("mkdir");
        if (mount("/usr", "/tmp/usr", NULL, MS_BIND | MS_REC, NULL))
            DIE("bind /usr");
        if (mount(NULL, "/tmp/usr", NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV,
                  NULL))
            DIE("ro /usr");
        if (symlink("usr/bin", "/tmp/bin") || symlink("usr/lib", "/tmp/lib") ||
            symlink("usr/lib64", "/tmp/lib64"))
            DIE("symlink");
        if (mount("proc", "/tmp/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL))
            DIE("proc");
        if (mount("tmpfs", "/tmp/tmp", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=64m"))
            DIE("tmp");
        if (chdir("/tmp") || syscall(SYS_pivot_root, ".", ".") || umount2(".", MNT_DETACH) ||
            chdir("/"))
            DIE("pivot_root");
        if (mount(NULL, "/", NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV, NULL))
            DIE("ro root");
        if (setresgid(1000, 1000, 1000) || setresuid(1000, 1000, 1000))
            DIE("setresuid");
        landlock();
        seccomp(allowed);
        char *envp[] = {"PATH=/usr/bin", NULL};
        execve(argv[a], &argv[a], envp);
        DIE("execve");
    }
    close(sync_pipe[0]);
    char path[64], map[64];
    snprintf(path, sizeof path, "/proc/%ld/setgroups", pid);
    write_file(path, "deny");
    snprintf(path, sizeof path, "/proc/%ld/uid_map", pid);
    snprintf(map, sizeof map, "1000 %u 1\n", (unsigned)uid);
    write_file(path, map);
    snprintf(path, sizeof path, "/proc/%ld/gid_map", pid);
    snprintf(map, sizeof map, "1000 %u 1\n", (unsigned)gid);
    write_file(path, map);
    if (write(sync_pipe[1], "g", 1) != 1)
        DIE("sync");
    close(sync_pipe[1]);
    int status;
    if (waitpid((pid_t)pid, &status, 0) < 0)
        DIE("waitpid");
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    return 128 + WTERMSIG(status);
}
