use std::collections::VecDeque;
use std::io::{self, Read};

fn main() {
    let mut s = String::new();
    io::stdin().read_to_string(&mut s).unwrap();
    let mut it = s.split_whitespace();
    let r: usize = it.next().unwrap().parse().unwrap();
    let c: usize = it.next().unwrap().parse().unwrap();
    let grid: Vec<&[u8]> = (0..r).map(|_| it.next().unwrap().as_bytes()).collect();
    let mut dist = vec![vec![-1i64; c]; r];
    let mut q = VecDeque::new();
    for i in 0..r {
        for j in 0..c {
            if grid[i][j] == b'S' {
                dist[i][j] = 0;
                q.push_back((i, j));
            }
        }
    }
    while let Some((i, j)) = q.pop_front() {
        if grid[i][j] == b'T' {
            println!("{}", dist[i][j]);
            return;
        }
        let steps: [(i64, i64); 4] = [(1, 0), (-1, 0), (0, 1), (0, -1)];
        for (di, dj) in steps.iter() {
            let a = i as i64 + di;
            let b = j as i64 + dj;
            if a < 0 || b < 0 || a >= r as i64 || b >= c as i64 {
                continue;
            }
            let (a, b) = (a as usize, b as usize);
            if grid[a][b] != b'#' && dist[a][b] < 0 {
                dist[a][b] = dist[i][j] + 1;
                q.push_back((a, b));
            }
        }
    }
    println!("-1");
}
