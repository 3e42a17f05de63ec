use std::io::Read;

const VALUES: [u32; 13] = [1000, 900, 500, 400, 100, 90, 50, 40, 10, 9, 5, 4, 1];
const SYMBOLS: [&str; 13] = [
    "M", "CM", "D", "CD", "C", "XC", "L", "XL", "X", "IX", "V", "IV", "I",
];

fn letter(c: u8) -> u32 {
    match c {
        b'I' => 1,
        b'V' => 5,
        b'X' => 10,
        b'L' => 50,
        b'C' => 100,
        b'D' => 500,
        b'M' => 1000,
        _ => 0,
    }
}

fn main() {
    let mut input = String::new();
    std::io::stdin().read_to_string(&mut input).unwrap();
    let mut it = input.split_whitespace();
    let q: usize = it.next().unwrap().parse().unwrap();
    let mut out = String::new();
    for tok in it.take(q) {
        if let Ok(mut n) = tok.parse::<u32>() {
            for (v, s) in VALUES.iter().zip(SYMBOLS.iter()) {
                while n >= *v {
                    out.push_str(s);
                    n -= v;
                }
            }
        } else {
            let b = tok.as_bytes();
            let mut total: i64 = 0;
            for i in 0..b.len() {
                let v = letter(b[i]) as i64;
                if i + 1 < b.len() && letter(b[i + 1]) as i64 > v {
                    total -= v;
                } else {
                    total += v;
                }
            }
            out.push_str(&total.to_string());
        }
        out.push('\n');
    }
    print!("{}", out);
}
