package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"switchboard/internal/auth"
	"switchboard/internal/httpapi"
	"switchboard/internal/store"
)

func cmdServe(ctx context.Context, c *cli, args []string) error {
	if err := c.parse("serve", args, nil); err != nil {
		return err
	}
	log, err := c.logger()
	if err != nil {
		return err
	}
	st, err := c.open(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	return serve(ctx, c, st, log, nil)
}

// serve listens on c.listen and serves until ctx ends, then drains in-flight
// requests. ready, when set, is called with the public URL once listening.
func serve(ctx context.Context, c *cli, st *store.Store, log *slog.Logger, ready func(publicURL string)) error {
	ln, err := net.Listen("tcp", c.listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", c.listen, err)
	}
	publicURL := strings.TrimRight(c.publicURL, "/")
	if publicURL == "" {
		publicURL = "http://" + ln.Addr().String()
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	handler := httpapi.New(httpapi.Config{
		Store:    st,
		Auth:     &auth.Authenticator{Store: st},
		Log:      log,
		Registry: reg,
	})
	srv := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       2 * time.Minute, // sends may carry 50 MB of attachments
		WriteTimeout:      2 * time.Minute,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	log.Info("serving", "addr", ln.Addr().String(), "public_url", publicURL, "engine", st.Engine())
	if ready != nil {
		ready(publicURL)
	}
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down: draining requests")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("shutdown: %w", err)
	}
	log.Info("stopped")
	return nil
}
