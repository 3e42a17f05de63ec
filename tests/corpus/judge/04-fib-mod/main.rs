use std::io::{self, Read};

const MOD: u64 = 1_000_000_007;

/// (F(n), F(n+1)) by fast doubling.
fn fib(n: u64) -> (u64, u64) {
    if n == 0 {
        return (0, 1);
    }
    let (a, b) = fib(n / 2);
    let c = a * ((2 * b + MOD - a) % MOD) % MOD;
    let d = (a * a + b * b) % MOD;
    if n % 2 == 1 {
        (d, (c + d) % MOD)
    } else {
        (c, d)
    }
}

fn main() {
    let mut s = String::new();
    io::stdin().read_to_string(&mut s).unwrap();
    let mut it = s.split_whitespace().map(|x| x.parse::<u64>().unwrap());
    let t = it.next().unwrap();
    for _ in 0..t {
        println!("{}", fib(it.next().unwrap()).0);
    }
}
