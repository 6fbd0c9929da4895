// Package wiretest builds values for the tests and benchmarks of package
// sbi/wire and of the bindings that use it: Fill sets every field of a
// value, Samples returns the messages that the wire benchmarks measure,
// filled as tern's NFs fill them. It is not for production code.
package wiretest
