// Package greet says hello.
package greet

// Greeter greets someone.
type Greeter interface {
	Greet(name string) string
}

// English greets in English.
type English struct{}

// Greet implements Greeter.
func (English) Greet(name string) string { return "Hello, " + name }

// Greet greets name in English.
func Greet(name string) string {
	return English{}.Greet(name)
}

// New returns the default Greeter.
func New() Greeter { return English{} }
