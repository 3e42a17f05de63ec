use std::io::{self, Read, Write};

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        let r = a % b;
        a = b;
        b = r;
    }
    a
}

fn main() {
    let mut s = String::new();
    io::stdin().read_to_string(&mut s).unwrap();
    let mut it = s.split_whitespace().map(|x| x.parse::<u64>().unwrap());
    let t = it.next().unwrap();
    let mut out = String::new();
    for _ in 0..t {
        let a = it.next().unwrap();
        let b = it.next().unwrap();
        let g = gcd(a, b);
        out.push_str(&format!("{} {}\n", g, a / g * b));
    }
    io::stdout().write_all(out.as_bytes()).unwrap();
}
