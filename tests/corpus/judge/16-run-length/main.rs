use std::io::Read;

fn main() {
    let mut input = String::new();
    std::io::stdin().read_to_string(&mut input).unwrap();
    let s: Vec<char> = input.split_whitespace().next().unwrap_or("").chars().collect();
    let mut out = String::new();
    let mut i = 0;
    while i < s.len() {
        let mut j = i;
        while j < s.len() && s[j] == s[i] {
            j += 1;
        }
        out.push(s[i]);
        out.push_str(&(j - i).to_string());
        i = j;
    }
    println!("{}", out);
}
