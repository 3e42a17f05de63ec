use std::io::Read;

fn main() {
    let mut word = String::new();
    std::io::stdin().read_to_string(&mut word).unwrap();
    let length: usize = word; // type error: a String is not a usize
    println!("{}", length);
}
