use std::io::{self, Read};

fn main() {
    let mut s = String::new();
    io::stdin().read_to_string(&mut s).unwrap();
    let mut it = s.split_whitespace().map(|x| x.parse::<u64>().unwrap());
    let n = it.next().unwrap() as usize;
    let budget = it.next().unwrap();
    let a: Vec<u64> = it.take(n).collect();
    let (mut best, mut left, mut total) = (0usize, 0usize, 0u64);
    for right in 0..n {
        total += a[right];
        while total > budget {
            total -= a[left];
            left += 1;
        }
        best = best.max(right + 1 - left);
    }
    println!("{}", best);
}
