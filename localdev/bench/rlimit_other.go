//go:build !unix

package main

func raiseFileLimit(uint64) error { return nil }
