//! The hostile programs of `lang_attacks`, one per language and side: each reads which
//! attack to make from its stdin (a syscall number and its arguments, or a word), prints
//! `START <what>` and flushes before it, and prints what the attack got after it. One source
//! per language keeps the compile step the same for every row (and the table readable).

/// C: a raw `syscall` instruction (inline assembly, not libc's wrapper) with the number and
/// up to six integer arguments read from stdin.
pub const C_SYSCALL: &str = r##"#include <stdio.h>
static long raw6(long n, long a, long b, long c, long d, long e, long f) {
    long r;
    register long r10 __asm__("r10") = d;
    register long r8 __asm__("r8") = e;
    register long r9 __asm__("r9") = f;
    __asm__ volatile("syscall" : "=a"(r) : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
                     : "rcx", "r11", "memory");
    return r;
}
int main(void) {
    long v[7] = {0};
    for (int i = 0; i < 7; i++)
        if (scanf("%li", &v[i]) != 1) break;
    printf("START %ld\n", v[0]);
    fflush(stdout);
    long r = raw6(v[0], v[1], v[2], v[3], v[4], v[5], v[6]);
    printf("RETURNED %ld\n", r);
    return 0;
}
"##;

/// C: the other run-side attacks, by word. A refused call prints its errno's name.
pub const C_MISC: &str = r##"#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
static void say(const char *what, int ok) { printf("%s %s\n", what, ok ? "OK" : strerrorname_np(errno)); }
static void *idle(void *a) { (void)a; pause(); return 0; }
static void copy(const char *from, const char *to) {
    char b[65536];
    ssize_t n;
    int in = open(from, O_RDONLY), out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0755);
    while ((n = read(in, b, sizeof b)) > 0) write(out, b, n);
    close(in);
    close(out);
}
int main(void) {
    char w[64] = {0};
    if (scanf("%63s", w) != 1) return 2;
    printf("START %s\n", w);
    fflush(stdout);
    if (!strcmp(w, "int80")) {
        long r;
        __asm__ volatile("int $0x80" : "=a"(r) : "a"(20L) : "memory");
        printf("RETURNED %ld\n", r);
    } else if (!strcmp(w, "forkbomb")) {
        for (;;)
            if (fork() < 0) { say("fork", 0); return 3; }
    } else if (!strcmp(w, "threadbomb")) {
        for (int i = 0;; i++) {
            pthread_t t;
            int e = pthread_create(&t, 0, idle, 0);
            if (e) { errno = e; say("pthread_create", 0); return 3; }
        }
    } else if (!strcmp(w, "balloon")) {
        for (;;) {
            char *p = malloc(64 << 20);
            if (!p) { say("malloc", 0); return 3; }
            memset(p, 1, 64 << 20);
        }
    } else if (!strcmp(w, "flood")) {
        static char b[65536];
        memset(b, 'x', sizeof b);
        for (;;) fwrite(b, 1, sizeof b, stdout);
    } else if (!strcmp(w, "writes")) {
        const char *ps[] = {"/usr/h4", "/usr/lib/h4", "/h4", "/etc/h4", "/etc/passwd", "/app/h4", "/dev/h4", "/proc/sys/kernel/hostname", "/tmp/h4"};
        for (unsigned i = 0; i < sizeof ps / sizeof *ps; i++) say(ps[i], open(ps[i], O_WRONLY | O_CREAT, 0644) >= 0);
    } else if (!strcmp(w, "exectmp")) {
        int fd = open("/tmp/x", O_WRONLY | O_CREAT, 0755);
        write(fd, "#!/bin/sh\necho BREACH\n", 22);
        close(fd);
        say("chmod /tmp/x", chmod("/tmp/x", 0755) == 0);
        char *a[] = {"/tmp/x", 0};
        execv(a[0], a);
        say("execv /tmp/x", 0);
        copy("/bin/true", "/tmp/t");
        char *b[] = {"/tmp/t", 0};
        execv(b[0], b);
        say("execv /tmp/t", 0);
        copy("/usr/lib/x86_64-linux-gnu/libm.so.6", "/tmp/l.so");
        void *h = dlopen("/tmp/l.so", RTLD_NOW);
        printf("dlopen %s\n", h ? "OK BREACH" : dlerror());
    } else if (!strcmp(w, "proc")) {
        DIR *d = opendir("/proc");
        struct dirent *e;
        while ((e = readdir(d)))
            if (atol(e->d_name) > 0) printf("pid %s\n", e->d_name);
        const char *m[] = {"/proc/keys", "/proc/kallsyms", "/proc/timer_list", "/proc/1/environ", "/proc/1/mem", "/proc/1/root/etc/passwd"};
        for (unsigned i = 0; i < sizeof m / sizeof *m; i++) {
            char b[256];
            int fd = open(m[i], O_RDONLY);
            if (fd < 0) { say(m[i], 0); continue; }
            printf("%s read %zd\n", m[i], read(fd, b, sizeof b));
        }
    }
    fflush(stdout);
    return 0;
}
"##;

/// C++: the raw syscall again, through C++'s own I/O (a C++ translation unit: another
/// compiler, `cc1plus`).
pub const CPP_SYSCALL: &str = r##"#include <iostream>
#include <string>
static long raw6(long n, const long *a) {
    long r;
    register long r10 __asm__("r10") = a[3];
    register long r8 __asm__("r8") = a[4];
    register long r9 __asm__("r9") = a[5];
    __asm__ volatile("syscall" : "=a"(r) : "a"(n), "D"(a[0]), "S"(a[1]), "d"(a[2]), "r"(r10), "r"(r8), "r"(r9)
                     : "rcx", "r11", "memory");
    return r;
}
int main() {
    long v[7] = {0};
    std::string s;
    for (int i = 0; i < 7 && std::cin >> s; i++) v[i] = std::stol(s, nullptr, 0);
    std::cout << "START " << v[0] << std::endl;
    long r = raw6(v[0], v + 1);
    std::cout << "RETURNED " << r << std::endl;
}
"##;

/// C++: threads, memory and output the C++ way (`std::thread`, `new`, `std::cout`).
pub const CPP_MISC: &str = r##"#include <chrono>
#include <cstring>
#include <iostream>
#include <new>
#include <string>
#include <system_error>
#include <thread>
#include <vector>
int main() {
    std::string w;
    std::cin >> w;
    std::cout << "START " << w << std::endl;
    if (w == "threadbomb") {
        std::vector<std::thread> ts;
        try {
            for (;;) ts.emplace_back([] { std::this_thread::sleep_for(std::chrono::hours(1)); });
        } catch (const std::system_error &e) {
            std::cout << "std::thread " << (e.code() == std::errc::resource_unavailable_try_again ? "EAGAIN" : e.what()) << std::endl;
            std::_Exit(3);
        }
    } else if (w == "balloon") {
        try {
            for (;;) std::memset(new char[64 << 20], 1, 64 << 20);
        } catch (const std::bad_alloc &) {
            std::cout << "new bad_alloc" << std::endl;
            return 3;
        }
    } else if (w == "flood") {
        std::string x(65536, 'x');
        for (;;) std::cout << x;
    }
}
"##;

/// Rust: `asm!` with no libc in the way: the number and arguments from stdin.
pub const RUST_SYSCALL: &str = r##"use std::arch::asm;
use std::io::{Read, Write};
fn raw6(n: i64, a: [i64; 6]) -> i64 {
    let r: i64;
    unsafe {
        asm!("syscall", inlateout("rax") n => r, in("rdi") a[0], in("rsi") a[1], in("rdx") a[2],
             in("r10") a[3], in("r8") a[4], in("r9") a[5], lateout("rcx") _, lateout("r11") _,
             options(nostack));
    }
    r
}
fn main() {
    let mut s = String::new();
    std::io::stdin().read_to_string(&mut s).unwrap();
    let v: Vec<i64> = s
        .split_whitespace()
        .map(|w| match w.strip_prefix("0x") {
            Some(h) => i64::from_str_radix(h, 16).unwrap(),
            None => w.parse().unwrap(),
        })
        .collect();
    let mut a = [0i64; 6];
    for (i, x) in v.iter().skip(1).take(6).enumerate() {
        a[i] = *x;
    }
    println!("START {}", v[0]);
    std::io::stdout().flush().unwrap();
    let r = raw6(v[0], a);
    println!("RETURNED {}", r);
}
"##;

/// Rust: a child process, memory, threads, output, writes and exec, the std way.
pub const RUST_MISC: &str = r##"use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
fn main() {
    let mut w = String::new();
    std::io::stdin().read_to_string(&mut w).unwrap();
    let w = w.trim();
    println!("START {}", w);
    std::io::stdout().flush().unwrap();
    match w {
        "command" => {
            let r = std::process::Command::new("/bin/sh").arg("-c").arg("echo BREACH").status();
            println!("command {:?}", r.map_err(|e| e.kind()));
        }
        "balloon" => {
            let mut keep: Vec<Vec<u8>> = Vec::new();
            loop {
                let mut v: Vec<u8> = Vec::new();
                if v.try_reserve_exact(64 << 20).is_err() {
                    println!("try_reserve Err");
                    std::process::exit(3);
                }
                v.resize(64 << 20, 1);
                keep.push(v);
            }
        }
        "threadbomb" => {
            let mut n = 0u64;
            loop {
                // Small stacks: the process limit, not the address space, refuses a thread.
                let b = std::thread::Builder::new().stack_size(64 * 1024);
                match b.spawn(|| std::thread::sleep(std::time::Duration::from_secs(3600))) {
                    Ok(_) => n += 1,
                    Err(e) => {
                        println!("spawn {:?} {}", e.kind(), n > 8);
                        std::process::exit(3);
                    }
                }
            }
        }
        "flood" => {
            let x = "x".repeat(65536);
            let mut o = std::io::stdout().lock();
            loop {
                o.write_all(x.as_bytes()).unwrap();
            }
        }
        "exectmp" => {
            std::fs::copy("/bin/true", "/tmp/t").unwrap();
            std::fs::set_permissions("/tmp/t", std::fs::Permissions::from_mode(0o755)).unwrap();
            // exec in this process (no fork): std's Command::exec is execve.
            let e = std::process::Command::new("/tmp/t").exec();
            println!("exec /tmp/t {:?}", e.raw_os_error());
        }
        "env" => {
            let mut s = Vec::new();
            std::fs::File::open("/proc/self/environ").unwrap().read_to_end(&mut s).unwrap();
            println!("{}", String::from_utf8_lossy(&s).replace('\0', "\n"));
        }
        _ => {}
    }
}
"##;

/// Go: `syscall.RawSyscall6`, the runtime's own door past the standard library.
pub const GO_SYSCALL: &str = r##"package main

import (
	"fmt"
	"os"
	"syscall"
)

func main() {
	var v [7]uintptr
	for i := range v {
		var x int64
		if _, err := fmt.Fscan(os.Stdin, &x); err != nil {
			break
		}
		v[i] = uintptr(x)
	}
	fmt.Printf("START %d\n", v[0])
	r1, _, e := syscall.RawSyscall6(v[0], v[1], v[2], v[3], v[4], v[5], v[6])
	fmt.Printf("RETURNED %d %d\n", int64(r1), int(e))
}
"##;

/// Go: a child process, exec of a file written to /tmp, memory, threads, output.
pub const GO_MISC: &str = r##"package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"time"
)

func main() {
	var w string
	fmt.Fscan(os.Stdin, &w)
	fmt.Printf("START %s\n", w)
	switch w {
	case "command":
		err := exec.Command("/bin/sh", "-c", "echo BREACH").Run()
		fmt.Println("command", err)
	case "exectmp":
		in, _ := os.Open("/bin/true")
		out, _ := os.OpenFile("/tmp/t", os.O_WRONLY|os.O_CREATE, 0755)
		io.Copy(out, in)
		out.Close()
		err := syscall.Exec("/tmp/t", []string{"/tmp/t"}, nil)
		fmt.Println("exec /tmp/t", err == syscall.EACCES)
	case "balloon":
		var keep [][]byte
		for {
			b := make([]byte, 64<<20)
			for i := range b {
				b[i] = 1
			}
			keep = append(keep, b)
		}
	case "threadbomb":
		for {
			go func() {
				runtime.LockOSThread()
				syscall.Select(0, nil, nil, nil, nil)
			}()
			time.Sleep(time.Millisecond)
		}
	case "flood":
		o := bufio.NewWriter(os.Stdout)
		x := strings.Repeat("x", 65536)
		for {
			o.WriteString(x)
		}
	}
}
"##;

/// Java: processes (`ProcessBuilder`, `Runtime.exec`), a native library from /tmp
/// (`System.load`: JNI's door), a socket, threads, memory, output, writes, /proc.
pub const JAVA_MISC: &str = r##"import java.io.*;
import java.nio.file.*;
import java.util.*;

public class Main {
    public static void main(String[] args) throws Exception {
        String w = new BufferedReader(new InputStreamReader(System.in)).readLine().trim();
        System.out.println("START " + w);
        System.out.flush();
        switch (w) {
            case "processbuilder":
                new ProcessBuilder("/bin/sh", "-c", "echo BREACH").inheritIO().start().waitFor();
                break;
            case "runtimeexec":
                Runtime.getRuntime().exec(new String[] {"/bin/true"}).waitFor();
                break;
            case "socket":
                try {
                    new java.net.Socket("127.0.0.1", 80).close();
                    System.out.println("BREACH connected");
                } catch (IOException e) {
                    System.out.println("Socket " + e);
                }
                break;
            case "jni":
                // read and write (Files.copy is sendfile, which the jail does not allow)
                Files.write(Paths.get("/tmp/l.so"), Files.readAllBytes(Paths.get("/usr/lib/x86_64-linux-gnu/libm.so.6")));
                try {
                    System.load("/tmp/l.so");
                    System.out.println("BREACH loaded");
                } catch (UnsatisfiedLinkError e) {
                    System.out.println("System.load " + (e.getMessage().contains("failed to map segment from shared object") ? "failed to map segment" : e.getMessage()));
                }
                break;
            case "threadbomb":
                try {
                    for (;;) {
                        Thread t = new Thread(() -> { try { Thread.sleep(3600000); } catch (InterruptedException e) { } });
                        t.setDaemon(true);
                        t.start();
                    }
                } catch (OutOfMemoryError e) {
                    System.out.println("Thread.start OutOfMemoryError");
                    System.out.flush();
                    Runtime.getRuntime().halt(3);
                }
            case "balloon":
                List<long[]> keep = new ArrayList<>();
                for (;;) keep.add(new long[1 << 20]);
            case "flood":
                char[] c = new char[65536];
                Arrays.fill(c, 'x');
                String s = new String(c);
                for (;;) System.out.print(s);
            case "writes":
                for (String p : new String[] {"/usr/h4", "/h4", "/etc/h4", "/app/h4", "/tmp/h4"}) {
                    try {
                        new FileOutputStream(p).close();
                        System.out.println(p + " OK");
                    } catch (IOException e) {
                        System.out.println(p + " " + e.getMessage());
                    }
                }
                break;
            case "proc":
                for (String f : new TreeSet<>(Arrays.asList(new File("/proc").list())))
                    if (f.matches("[0-9]+")) System.out.println("pid " + f);
                break;
            case "helper":
                try {
                    Class.forName("Helper");
                    System.out.println("BREACH Helper found");
                } catch (ClassNotFoundException e) {
                    System.out.println("Class.forName ClassNotFoundException");
                }
                System.out.println("classes " + String.join(",", new TreeSet<>(Arrays.asList(new File(Main.class.getProtectionDomain().getCodeSource().getLocation().toURI()).list()))));
                break;
        }
        System.out.flush();
    }
}
"##;
