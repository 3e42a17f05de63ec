/*
 * launch: the one harness every candidate is measured from, so the harness's own cost
 * (fork of a ~1 MB process, execve, wait4) is identical for all of them.
 *
 *   launch rounds N  NAME ARGV... ; NAME ARGV... ; ...
 *       Round-robin: in each of N rounds, spawn every candidate once (fork + execve,
 *       stdio on /dev/null) and wait for it with wait4. Prints one line per launch:
 *           NAME <wall_ns> <ru_maxrss_kb> <exit_status>
 *       wall is CLOCK_MONOTONIC from just before fork to wait4's return. The candidate
 *       order rotates every round so no candidate always follows the same one.
 *
 *   launch idle N GAP_MS  NAME ARGV... ; NAME ARGV... ; ...
 *       As rounds, but before each launch the harness sleeps GAP_MS (not timed): launches
 *       after an idle moment, as a systemd unit per job or an agent calling now and then
 *       makes them. An idle host pays kernel waits back-to-back launches never see (an RCU
 *       grace period is slow to end when nothing else runs).
 *
 *   launch throughput SECONDS WORKERS NAME ARGV...
 *       Keep WORKERS launches in flight for SECONDS; print
 *           NAME <workers> <completed> <elapsed_ns> <failures>
 *
 *   launch hwm NAME ARGV...
 *       Spawn once; while it runs, sample VmHWM of the spawned process (not of its
 *       children) from /proc/PID/status every 200 us; print NAME <max_vmhwm_kb> <ru_maxrss_kb>.
 *
 * "bare" in the report is this harness spawning /bin/true directly: the spawn cost with no
 * jail, the floor every other candidate pays too.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

struct cand {
    const char *name;
    char **argv;
};

static long long now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int devnull = -1;

static pid_t spawn(char **argv) {
    pid_t pid = fork();
    if (pid == 0) {
        dup2(devnull, 0);
        dup2(devnull, 1);
        dup2(devnull, 2);
        execve(argv[0], argv, environ);
        _exit(127);
    }
    return pid;
}

/* Split "NAME ARGV... ; NAME ARGV... ;" into candidates (argv arrays are NULL-terminated
 * in place by replacing the ";" separators). */
static int parse(int argc, char **argv, struct cand *out, int max) {
    int n = 0, i = 0;
    while (i < argc && n < max) {
        out[n].name = argv[i++];
        out[n].argv = &argv[i];
        while (i < argc && strcmp(argv[i], ";") != 0)
            i++;
        if (i < argc)
            argv[i++] = NULL;
        n++;
    }
    return n;
}

static int cmd_rounds(int rounds, long gap_ms, int argc, char **argv) {
    struct cand c[16];
    int n = parse(argc, argv, c, 16);
    for (int r = 0; r < rounds; r++) {
        for (int k = 0; k < n; k++) {
            struct cand *x = &c[(k + r) % n];
            struct rusage ru;
            int status = 0;
            if (gap_ms > 0) {
                struct timespec gap = {gap_ms / 1000, (gap_ms % 1000) * 1000000L};
                while (nanosleep(&gap, &gap) < 0 && errno == EINTR)
                    ;
            }
            long long t0 = now_ns();
            pid_t pid = spawn(x->argv);
            if (pid < 0) {
                perror("fork");
                return 2;
            }
            while (wait4(pid, &status, 0, &ru) < 0 && errno == EINTR)
                ;
            long long t1 = now_ns();
            printf("%s %lld %ld %d\n", x->name, t1 - t0, ru.ru_maxrss,
                   WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
        }
    }
    return 0;
}

static int cmd_throughput(double secs, int workers, int argc, char **argv) {
    struct cand c;
    parse(argc, argv, &c, 1);
    long long t0 = now_ns(), end = t0 + (long long)(secs * 1e9);
    long completed = 0, failures = 0;
    int inflight = 0;
    for (int w = 0; w < workers; w++) {
        if (spawn(c.argv) > 0)
            inflight++;
    }
    while (inflight > 0) {
        int status;
        pid_t p = wait(&status);
        if (p < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        inflight--;
        completed++;
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
            failures++;
        if (now_ns() < end && spawn(c.argv) > 0)
            inflight++;
    }
    printf("%s %d %ld %lld %ld\n", c.name, workers, completed, now_ns() - t0, failures);
    return 0;
}

static long vmhwm_kb(pid_t pid) {
    char path[64], buf[4096];
    snprintf(path, sizeof path, "/proc/%d/status", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return -1;
    buf[n] = 0;
    char *p = strstr(buf, "VmHWM:");
    return p ? strtol(p + 6, NULL, 10) : -1;
}

static int cmd_hwm(int argc, char **argv) {
    struct cand c;
    parse(argc, argv, &c, 1);
    pid_t pid = spawn(c.argv);
    long best = -1;
    struct rusage ru;
    int status;
    for (;;) {
        pid_t r = wait4(pid, &status, WNOHANG, &ru);
        if (r == pid)
            break;
        long h = vmhwm_kb(pid);
        if (h > best)
            best = h;
        struct timespec ts = {0, 200000};
        nanosleep(&ts, NULL);
    }
    printf("%s %ld %ld\n", c.name, best, ru.ru_maxrss);
    return 0;
}

int main(int argc, char **argv) {
    devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc >= 4 && strcmp(argv[1], "rounds") == 0)
        return cmd_rounds(atoi(argv[2]), 0, argc - 3, argv + 3);
    if (argc >= 5 && strcmp(argv[1], "idle") == 0)
        return cmd_rounds(atoi(argv[2]), atol(argv[3]), argc - 4, argv + 4);
    if (argc >= 6 && strcmp(argv[1], "throughput") == 0)
        return cmd_throughput(atof(argv[2]), atoi(argv[3]), argc - 4, argv + 4);
    if (argc >= 4 && strcmp(argv[1], "hwm") == 0)
        return cmd_hwm(argc - 2, argv + 2);
    fprintf(stderr, "usage: launch rounds N NAME ARGV... [; NAME ARGV...]...\n"
                    "       launch idle N GAP_MS NAME ARGV... [; NAME ARGV...]...\n"
                    "       launch throughput SECONDS WORKERS NAME ARGV...\n"
                    "       launch hwm NAME ARGV...\n");
    return 2;
}
