use std::io::{self, Read};

fn main() {
    let mut s = String::new();
    io::stdin().read_to_string(&mut s).unwrap();
    let mut it = s.split_whitespace().map(|x| x.parse::<usize>().unwrap());
    let n = it.next().unwrap();
    let cap = it.next().unwrap();
    let mut best = vec![0u64; cap + 1];
    for _ in 0..n {
        let w = it.next().unwrap();
        let v = it.next().unwrap() as u64;
        if w > cap {
            continue;
        }
        for c in (w..=cap).rev() {
            best[c] = best[c].max(best[c - w] + v);
        }
    }
    println!("{}", best[cap]);
}
