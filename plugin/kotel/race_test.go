//go:build race

package kotel_test

const raceEnabled = true
