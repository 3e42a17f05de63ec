use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io::Read;

fn main() {
    let mut input = String::new();
    std::io::stdin().read_to_string(&mut input).unwrap();
    let mut it = input.split_whitespace().map(|t| t.parse::<i64>().unwrap());
    let n = it.next().unwrap() as usize;
    let m = it.next().unwrap() as usize;
    let s = it.next().unwrap() as usize;
    let mut adj: Vec<Vec<(usize, i64)>> = vec![Vec::new(); n + 1];
    for _ in 0..m {
        let u = it.next().unwrap() as usize;
        let v = it.next().unwrap() as usize;
        let w = it.next().unwrap();
        adj[u].push((v, w));
    }
    let mut dist: Vec<Option<i64>> = vec![None; n + 1];
    dist[s] = Some(0);
    let mut heap = BinaryHeap::new();
    heap.push(Reverse((0i64, s)));
    while let Some(Reverse((d, u))) = heap.pop() {
        if dist[u].map_or(false, |best| d > best) {
            continue;
        }
        for &(v, w) in &adj[u] {
            let nd = d + w;
            if dist[v].map_or(true, |best| nd < best) {
                dist[v] = Some(nd);
                heap.push(Reverse((nd, v)));
            }
        }
    }
    let parts: Vec<String> = dist[1..]
        .iter()
        .map(|d| d.unwrap_or(-1).to_string())
        .collect();
    println!("{}", parts.join(" "));
}
