use std::io::Read;

fn main() {
    let mut input = String::new();
    std::io::stdin().read_to_string(&mut input).unwrap();
    let mut it = input.split_whitespace().map(|t| t.parse::<usize>().unwrap());
    let n = it.next().unwrap();
    let m = it.next().unwrap();
    let mut adj: Vec<Vec<usize>> = vec![Vec::new(); n]; // bug: tasks are numbered 1..n
    let mut indeg = vec![0usize; n + 1];
    for _ in 0..m {
        let u = it.next().unwrap();
        let v = it.next().unwrap();
        adj[u].push(v); // panics: index out of bounds for u == n
        indeg[v] += 1;
    }
    let mut done = vec![false; n + 1];
    let mut order = Vec::new();
    while let Some(u) = (1..=n).find(|&v| !done[v] && indeg[v] == 0) {
        done[u] = true;
        order.push(u.to_string());
        for &v in &adj[u] {
            indeg[v] -= 1;
        }
    }
    println!("{}", order.join(" "));
}
