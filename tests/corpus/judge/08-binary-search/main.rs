use std::io::{self, Read, Write};

fn main() {
    let mut s = String::new();
    io::stdin().read_to_string(&mut s).unwrap();
    let mut it = s.split_whitespace().map(|x| x.parse::<i64>().unwrap());
    let n = it.next().unwrap() as usize;
    let a: Vec<i64> = (0..n).map(|_| it.next().unwrap()).collect();
    let q = it.next().unwrap();
    let mut out = String::new();
    for _ in 0..q {
        let x = it.next().unwrap();
        out.push_str(&format!("{}\n", a.partition_point(|&v| v <= x)));
    }
    io::stdout().write_all(out.as_bytes()).unwrap();
}
