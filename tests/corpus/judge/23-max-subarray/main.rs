use std::io::Read;

fn main() {
    let mut input = String::new();
    std::io::stdin().read_to_string(&mut input).unwrap();
    let mut it = input.split_whitespace().map(|t| t.parse::<i64>().unwrap());
    let n = it.next().unwrap() as usize;
    let mut best = i64::MIN;
    let mut cur = 0i64;
    for (i, x) in it.take(n).enumerate() {
        cur = if i == 0 { x } else { x.max(cur + x) };
        best = best.max(cur);
    }
    println!("{}", best);
}
