package main

import (
	"fmt"

	"example.com/shop/greet"
	"example.com/shop/store"
)

func main() {
	s := store.New()
	if err := s.Add(store.Item{Name: "tea", Price: 3}); err != nil {
		fmt.Println(err)
	}
	fmt.Println(greet.Greet("world"), s.Total())
}
