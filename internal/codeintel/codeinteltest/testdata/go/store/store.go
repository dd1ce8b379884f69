// Package store keeps items.
package store

import "errors"

// Item is one thing for sale.
type Item struct {
	Name  string
	Price int
}

// Store holds items.
type Store struct {
	items []Item
}

// New returns an empty Store.
func New() *Store { return &Store{} }

// Add adds an item.
func (s *Store) Add(it Item) error {
	if it.Name == "" {
		return errors.New("an item needs a name")
	}
	s.items = append(s.items, it)
	return nil
}

// Total is the sum of the prices.
func (s *Store) Total() int {
	t := 0
	for _, it := range s.items {
		t += it.Price
	}
	return t
}
