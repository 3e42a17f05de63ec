use std::collections::HashMap;
use std::io::Read;

fn main() {
    let mut input = String::new();
    std::io::stdin().read_to_string(&mut input).unwrap();
    let mut it = input.split_whitespace();
    let n: usize = it.next().unwrap().parse().unwrap();
    let mut groups: HashMap<Vec<u8>, usize> = HashMap::new();
    for w in it.take(n) {
        let mut key = w.as_bytes().to_vec();
        key.sort_unstable();
        *groups.entry(key).or_insert(0) += 1;
    }
    let largest = groups.values().copied().max().unwrap_or(0);
    println!("{}\n{}", groups.len(), largest);
}
