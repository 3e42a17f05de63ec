package main

import "fmt"

func main() {
	var word string
	fmt.Scan(&word)
	var length int = word // type error: a string is not an int
	fmt.Println(length)
}
