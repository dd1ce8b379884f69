package mod

// Name is the system's name.
func Name() string { return name }
