// Package smoke is the end-to-end smoke suite: it starts five real local
// Pulsar clusters with internal/testbed and checks that each one produces,
// consumes and commits transactions, that the others keep serving when one
// is killed, that a killed cluster restarts on its ports and a paused one
// serves again after resume, that README.md's quick start runs as shown,
// and that no JVM survives the suite.
//
// The specs are behind the e2e build tag:
//
//	go test -tags e2e -count=1 -timeout 30m ./e2e/smoke/
package smoke
