// Package kzap is the zap adapter for keyroute's logs: Logger turns a
// *zap.Logger into the producer.Logger option, so that the producer's own
// logs and pulsar-client-go's logs (one client per cluster, each tagged with
// a "cluster" field) go to zap.
//
// Data flows topology -> router -> producer -> (slog) kzap -> zap: the
// producer logs through log/slog, and kzap supplies a slog.Handler over the
// zap logger's core (go.uber.org/zap/exp/zapslog). Levels, sampling and
// encoding stay zap's; the logger's name and fields are kept.
//
//	z, _ := zap.NewProduction()
//	p, err := producer.New(ctx, topo, producer.Topic(topic), kzap.Logger(z))
//
// Secrets are not logged: topology.Auth redacts its token when formatted or
// logged, and the producer never logs client options.
package kzap
