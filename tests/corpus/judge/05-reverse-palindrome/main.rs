use std::io::{self, Read};

fn main() {
    let mut s = String::new();
    io::stdin().read_to_string(&mut s).unwrap();
    let mut it = s.split_whitespace();
    let t: usize = it.next().unwrap().parse().unwrap();
    for _ in 0..t {
        let w = it.next().unwrap();
        let r: String = w.chars().rev().collect();
        println!("{} {}", r, if r == w { "yes" } else { "no" });
    }
}
