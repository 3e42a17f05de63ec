use std::io::{self, Read};

fn main() {
    let mut s = String::new();
    io::stdin().read_to_string(&mut s).unwrap();
    let n: usize = s.trim().parse().unwrap();
    let mut composite = vec![false; n + 1];
    let (mut count, mut total) = (0u64, 0u64);
    for i in 2..=n {
        if composite[i] {
            continue;
        }
        count += 1;
        total += i as u64;
        let mut j = i * i;
        while j <= n {
            composite[j] = true;
            j += i;
        }
    }
    println!("{} {}", count, total);
}
