package main

import (
	"bufio"
	"fmt"
	"os"
)

type parser struct {
	s   string
	pos int
}

func (p *parser) peek() byte {
	for p.pos < len(p.s) && (p.s[p.pos] == ' ' || p.s[p.pos] == '\t' || p.s[p.pos] == '\r' || p.s[p.pos] == '\n') {
		p.pos++
	}
	if p.pos < len(p.s) {
		return p.s[p.pos]
	}
	return 0
}

func (p *parser) expr() int64 {
	v := p.term()
	for op := p.peek(); op == '+' || op == '-'; op = p.peek() {
		p.pos++
		r := p.term()
		if op == '+' {
			v += r
		} else {
			v -= r
		}
	}
	return v
}

func (p *parser) term() int64 {
	v := p.factor()
	for op := p.peek(); op == '*' || op == '/'; op = p.peek() {
		p.pos++
		r := p.factor()
		if op == '*' {
			v *= r
		} else {
			v /= r // Go's integer division truncates toward zero
		}
	}
	return v
}

func (p *parser) factor() int64 {
	if p.peek() == '(' {
		p.pos++
		v := p.expr()
		p.peek()
		p.pos++ // ')'
		return v
	}
	var v int64
	for p.pos < len(p.s) && p.s[p.pos] >= '0' && p.s[p.pos] <= '9' {
		v = v*10 + int64(p.s[p.pos]-'0')
		p.pos++
	}
	return v
}

func main() {
	line, _ := bufio.NewReader(os.Stdin).ReadString('\n')
	p := &parser{s: line}
	fmt.Println(p.expr())
}
