use std::io::Read;

fn place(full: u32, cols: u32, d1: u32, d2: u32) -> u64 {
    if cols == full {
        return 1;
    }
    let mut count = 0;
    let mut free = full & !(cols | d1 | d2);
    while free != 0 {
        let bit = free & free.wrapping_neg();
        free -= bit;
        count += place(full, cols | bit, ((d1 | bit) << 1) & full, (d2 | bit) >> 1);
    }
    count
}

fn main() {
    let mut input = String::new();
    std::io::stdin().read_to_string(&mut input).unwrap();
    let n: u32 = input.trim().parse().unwrap();
    println!("{}", place((1 << n) - 1, 0, 0, 0));
}
