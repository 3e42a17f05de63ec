//! Compiled languages through `serve` (issue 39, item 4): both steps, the compile jail and
//! the run jail, come warm from the engine's step pools (started before the job, the job's
//! files written into the root before it is sealed), and a job's record says so. Attacked:
//! a job's program tries to plant a file where a warm jail waiting for a later job would
//! take it; the later job's jails hold only its own files, and its record is the one
//! `agentjail run` gives for the same job. As root and as nobody; nothing left behind.

use super::*;

/// policies/judge.toml, readable by nobody.
fn judge() -> PathBuf {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/policies/judge.toml"))
        .unwrap();
    common::shared_file("warm-steps-judge.toml", &text)
}

fn lang_action(language: &str, code: &str, stdin: &str) -> Value {
    let entrypoint = if language == "c" {
        "main.c"
    } else {
        "main.cpp"
    };
    json!({"id": "warm", "language": language, "entrypoint": entrypoint, "code": code,
           "stdin": stdin, "output_mode": "text"})
}

/// Until every step pool has a jail ready (the first job of each step made its pool).
fn wait_pools_ready(s: &mut Server, pools: usize, who: Who) {
    let t = Instant::now();
    loop {
        let st = s.io().stats();
        let list = st["step_pools"].as_array().cloned().unwrap_or_default();
        if list.len() >= pools && list.iter().all(|p| p["ready"].as_u64() >= Some(1)) {
            return;
        }
        assert!(
            t.elapsed() < Duration::from_secs(30),
            "{who:?}: the step pools never filled: {st}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn starts(rec: &Value) -> (String, String) {
    let s = |v: &Value| v.as_str().unwrap_or("null").to_string();
    (s(&rec["compile"]["jail_start"]), s(&rec["jail_start"]))
}

/// The attacker: plants a marker file wherever another jail's late directory could be
/// reached (every /proc/N/root of its own pid namespace, its own /app), counting the files
/// it managed to create there; leaves a file in its /tmp; its binary holds `marker`.
fn attacker(marker: &str) -> String {
    format!(
        r#"#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
static const char *MARK = "{marker}";
int main(void) {{
    int planted = 0, tried = 0;
    char path[512];
    const char *dirs[] = {{"/app", "/app/bin", "/app/out"}};
    for (int i = 0; i < 3; i++) {{
        snprintf(path, sizeof path, "%s/planted", dirs[i]);
        int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0755);
        tried++;
        if (fd >= 0 && i < 2) planted++;
        if (fd >= 0) close(fd);
    }}
    DIR *d = opendir("/proc");
    struct dirent *e;
    while (d && (e = readdir(d))) {{
        if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
        const char *rel[] = {{"tmp/app/bin/planted", "tmp/app/planted", "app/bin/planted",
                              "app/planted"}};
        for (int i = 0; i < 4; i++) {{
            snprintf(path, sizeof path, "/proc/%s/root/%s", e->d_name, rel[i]);
            int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0755);
            tried++;
            if (fd >= 0) {{ planted++; write(fd, MARK, strlen(MARK)); close(fd); }}
        }}
    }}
    int t = open("/tmp/left-by-a", O_WRONLY | O_CREAT, 0644);
    if (t >= 0) close(t);
    printf("tried>0 %d planted %d\n", tried > 0, planted);
    return 0;
}}
"#
    )
}

/// The later job: its /app, /app/bin and /tmp, and whether the attacker's marker is in any
/// file under /app (built at run time, so its own binary does not hold it).
fn victim(marker_head: &str, marker_tail: &str) -> String {
    format!(
        r#"#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
static int by_name(const void *a, const void *b) {{
    return strcmp(*(char *const *)a, *(char *const *)b);
}}
static void list(const char *dir) {{
    static char names[64][256];
    char *sorted[64];
    int n = 0;
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && n < 64 && (e = readdir(d)))
        if (e->d_name[0] != '.') {{
            snprintf(names[n], 256, "%s", e->d_name);
            sorted[n] = names[n];
            n++;
        }}
    if (d) closedir(d);
    qsort(sorted, n, sizeof *sorted, by_name);
    printf("%s:", dir);
    for (int i = 0; i < n; i++) printf(" %s", sorted[i]);
    printf("\n");
}}
static int holds(const char *path, const char *needle) {{
    FILE *f = fopen(path, "rb");
    static char buf[1 << 20];
    if (!f) return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    for (size_t i = 0; i + strlen(needle) <= n; i++)
        if (memcmp(buf + i, needle, strlen(needle)) == 0) return 1;
    return 0;
}}
int main(void) {{
    char needle[128];
    snprintf(needle, sizeof needle, "%s%s", "{marker_head}", "{marker_tail}");
    char line[64] = {{0}};
    fgets(line, sizeof line, stdin);
    printf("read %s", line);
    list("/app");
    list("/app/bin");
    list("/tmp");
    printf("marker in /app/bin/main %d\n", holds("/app/bin/main", needle));
    return 0;
}}
"#
    )
}

#[test]
fn compiled_jobs_take_warm_jails_for_both_steps_and_nothing_of_one_job_reaches_the_next() {
    let policy = judge();
    for who in variants() {
        let m = common::marker("warm-steps");
        let (head, tail) = m.split_at(m.len() / 2);
        let mut s = Server::start(who, &policy, &m, &["--pool", "1"]);
        // The first C job makes the step pools and starts its own jails.
        let first = s
            .io()
            .run(lang_action("c", "int main(void){return 0;}\n", ""));
        assert_eq!(first["stop_reason"], "success", "{who:?}: {first:#}");
        assert_eq!(starts(&first), ("cold".into(), "cold".into()), "{who:?}");
        wait_pools_ready(&mut s, 2, who);
        // The attacker runs while the jails of the next job wait in the pools.
        let a = s.io().run(lang_action("c", &attacker(&m), ""));
        assert_eq!(a["stop_reason"], "success", "{who:?}: {a:#}");
        assert_eq!(starts(&a), ("warm".into(), "warm".into()), "{who:?}: {a:#}");
        assert_eq!(
            a["execution"]["stdout"], "tried>0 1 planted 0\n",
            "{who:?}: the attacker planted a file: {a:#}"
        );
        wait_pools_ready(&mut s, 2, who);
        let job = lang_action("c", &victim(head, tail), "seven\n");
        let b = s.io().run(job.clone());
        assert_eq!(b["stop_reason"], "success", "{who:?}: {b:#}");
        assert_eq!(starts(&b), ("warm".into(), "warm".into()), "{who:?}: {b:#}");
        let want = "read seven\n/app: bin out\n/app/bin: main\n/tmp:\nmarker in /app/bin/main 0\n";
        assert_eq!(b["execution"]["stdout"], want, "{who:?}: {b:#}");
        // The same job through `agentjail run`: cold jails, the same record.
        let cold = common::run_as(
            who,
            &["--policy", policy.to_str().unwrap()],
            &serde_json::to_vec(&job).unwrap(),
            None,
        );
        let c = &cold.record;
        assert_eq!(starts(c), ("cold".into(), "cold".into()), "{who:?}: {c:#}");
        for k in [
            "/stop_reason",
            "/execution/stdout",
            "/execution/stderr",
            "/execution/exit_code",
            "/compile/status",
            "/compile/exit_code",
            "/compile/stderr",
        ] {
            assert_eq!(
                b.pointer(k),
                c.pointer(k),
                "{who:?}: {k}: serve {b:#} run {c:#}"
            );
        }
        assert_eq!(
            b["compile"]["outputs"], c["compile"]["outputs"],
            "{who:?}: the artifact differs from run's"
        );
        // C++ the same way: its first job makes its compile pool (its run plan is C's here,
        // so it shares that pool), the next takes them.
        let cpp = "#include <iostream>\nint main(){std::string s; std::cin >> s; std::cout << s.size() << \"\\n\";}\n";
        let first = s.io().run(lang_action("cpp", cpp, "abc\n"));
        assert_eq!(first["stop_reason"], "success", "{who:?}: {first:#}");
        wait_pools_ready(&mut s, 3, who);
        // Another program (a comment): the compile cache does not answer, a compile runs.
        let other = format!("// another program\n{cpp}");
        let second = s.io().run(lang_action("cpp", &other, "abcdef\n"));
        assert_eq!(
            starts(&second),
            ("warm".into(), "warm".into()),
            "{who:?}: {second:#}"
        );
        assert_eq!(second["execution"]["stdout"], "6\n", "{who:?}: {second:#}");
        s.finish();
    }
}
