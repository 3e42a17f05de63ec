use std::fmt::Write;
use std::io::Read;

fn power(mut a: u64, mut b: u64, m: u64) -> u64 {
    let mut result = 1 % m;
    a %= m;
    while b > 0 {
        if b & 1 == 1 {
            result = result * a % m;
        }
        a = a * a % m;
        b >>= 1;
    }
    result
}

fn main() {
    let mut input = String::new();
    std::io::stdin().read_to_string(&mut input).unwrap();
    let mut it = input.split_whitespace().map(|t| t.parse::<u64>().unwrap());
    let q = it.next().unwrap();
    let mut out = String::new();
    for _ in 0..q {
        let a = it.next().unwrap();
        let b = it.next().unwrap();
        let m = it.next().unwrap();
        writeln!(out, "{}", power(a, b, m)).unwrap();
    }
    print!("{}", out);
}
