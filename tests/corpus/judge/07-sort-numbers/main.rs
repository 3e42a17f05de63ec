use std::io::{self, Read};

fn main() {
    let mut s = String::new();
    io::stdin().read_to_string(&mut s).unwrap();
    let mut it = s.split_whitespace();
    let n: usize = it.next().unwrap().parse().unwrap();
    let mut xs: Vec<i64> = it.take(n).map(|x| x.parse().unwrap()).collect();
    xs.sort();
    let parts: Vec<String> = xs.iter().map(|x| x.to_string()).collect();
    println!("{}", parts.join(" "));
}
