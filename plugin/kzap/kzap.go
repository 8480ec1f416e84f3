package kzap

import (
	"log/slog"

	"go.uber.org/zap"
	"go.uber.org/zap/exp/zapslog"

	"github.com/keyroute/keyroute/producer"
)

// Logger returns the producer option that routes the producer's and
// pulsar-client-go's logs to z. A nil z logs nothing, like no option.
func Logger(z *zap.Logger) producer.Opt {
	return producer.Logger(Slog(z))
}

// Slog returns a *slog.Logger writing to z's core under z's name, or nil
// for a nil z.
func Slog(z *zap.Logger) *slog.Logger {
	if z == nil {
		return nil
	}
	var opts []zapslog.HandlerOption
	if name := z.Name(); name != "" {
		opts = append(opts, zapslog.WithName(name))
	}
	return slog.New(zapslog.NewHandler(z.Core(), opts...))
}
