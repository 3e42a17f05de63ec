use std::io::{self, Read};

fn main() {
    let mut s = String::new();
    io::stdin().read_to_string(&mut s).unwrap();
    let mut it = s.split_whitespace().map(|x| x.parse::<i64>().unwrap());
    let n = it.next().unwrap() as usize;
    let m = it.next().unwrap() as usize;
    let p = it.next().unwrap() as usize;
    let a: Vec<Vec<i64>> = (0..n).map(|_| (0..m).map(|_| it.next().unwrap()).collect()).collect();
    let b: Vec<Vec<i64>> = (0..m).map(|_| (0..p).map(|_| it.next().unwrap()).collect()).collect();
    for row in &a {
        let cells: Vec<String> = (0..p)
            .map(|j| (0..m).map(|k| row[k] * b[k][j]).sum::<i64>().to_string())
            .collect();
        println!("{}", cells.join(" "));
    }
}
