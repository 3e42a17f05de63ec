use std::io::Read;

const MOD: u64 = 1_000_000_007;

fn main() {
    let mut input = String::new();
    std::io::stdin().read_to_string(&mut input).unwrap();
    let mut it = input.split_whitespace().map(|t| t.parse::<usize>().unwrap());
    let n = it.next().unwrap();
    let t = it.next().unwrap();
    let mut ways = vec![0u64; t + 1];
    ways[0] = 1;
    for c in it.take(n) {
        for x in c..=t {
            ways[x] = (ways[x] + ways[x - c]) % MOD;
        }
    }
    println!("{}", ways[t]);
}
