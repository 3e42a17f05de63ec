use std::io::Read;

struct Parser {
    s: Vec<u8>,
    pos: usize,
}

impl Parser {
    fn peek(&mut self) -> u8 {
        while self.pos < self.s.len() && self.s[self.pos].is_ascii_whitespace() {
            self.pos += 1;
        }
        if self.pos < self.s.len() {
            self.s[self.pos]
        } else {
            0
        }
    }

    fn expr(&mut self) -> i64 {
        let mut v = self.term();
        loop {
            let op = self.peek();
            if op != b'+' && op != b'-' {
                return v;
            }
            self.pos += 1;
            let r = self.term();
            v = if op == b'+' { v + r } else { v - r };
        }
    }

    fn term(&mut self) -> i64 {
        let mut v = self.factor();
        loop {
            let op = self.peek();
            if op != b'*' && op != b'/' {
                return v;
            }
            self.pos += 1;
            let r = self.factor();
            // Rust's integer division truncates toward zero.
            v = if op == b'*' { v * r } else { v / r };
        }
    }

    fn factor(&mut self) -> i64 {
        if self.peek() == b'(' {
            self.pos += 1;
            let v = self.expr();
            self.peek();
            self.pos += 1; // ')'
            return v;
        }
        let mut v = 0i64;
        while self.pos < self.s.len() && self.s[self.pos].is_ascii_digit() {
            v = v * 10 + (self.s[self.pos] - b'0') as i64;
            self.pos += 1;
        }
        v
    }
}

fn main() {
    let mut input = String::new();
    std::io::stdin().read_to_string(&mut input).unwrap();
    let line = input.lines().next().unwrap_or("");
    let mut p = Parser {
        s: line.as_bytes().to_vec(),
        pos: 0,
    };
    println!("{}", p.expr());
}
