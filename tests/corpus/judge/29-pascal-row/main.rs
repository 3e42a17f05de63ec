use std::io::Read;

fn main() {
    let mut input = String::new();
    std::io::stdin().read_to_string(&mut input).unwrap();
    let n: usize = input.trim().parse().unwrap();
    let mut row = vec![1u64];
    for _ in 0..n {
        let mut next = vec![1u64];
        next.extend(row.windows(2).map(|w| w[0] + w[1]));
        next.push(1);
        row = next;
    }
    let parts: Vec<String> = row.iter().map(|v| v.to_string()).collect();
    println!("{}", parts.join(" "));
}
