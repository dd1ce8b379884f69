package mod

// Big is an int only on CPUs of 64 bits: a build for 32 bits fails.
var Big int = 1 << 40
