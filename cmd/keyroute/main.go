package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, newEnv(os.Stdin, os.Stdout, os.Stderr), os.Args[1:])
	stop()
	os.Exit(code)
}
