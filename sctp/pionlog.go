package sctp

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/pion/logging"
)

// pion logs protocol internals (every SACK, every state change) and warns
// about things that are normal for N2, such as a peer without FORWARD-TSN.
// Its levels are therefore shifted down one step into slog: pion Warn is
// slog Info, pion Info is slog Debug and pion Debug/Trace go below Debug.
const levelPionTrace = slog.LevelDebug - 4

type pionLoggerFactory struct{ log *slog.Logger }

func (f pionLoggerFactory) NewLogger(scope string) logging.LeveledLogger {
	return pionLogger{log: f.log.With("scope", "pion/"+scope)}
}

type pionLogger struct{ log *slog.Logger }

func (l pionLogger) emit(level slog.Level, msg string) {
	if l.log.Enabled(context.Background(), level) {
		l.log.Log(context.Background(), level, msg)
	}
}

func (l pionLogger) emitf(level slog.Level, format string, args []any) {
	// Format only when someone listens: pion calls these on every packet.
	if l.log.Enabled(context.Background(), level) {
		l.log.Log(context.Background(), level, fmt.Sprintf(format, args...))
	}
}

func (l pionLogger) Trace(msg string)                  { l.emit(levelPionTrace, msg) }
func (l pionLogger) Tracef(format string, args ...any) { l.emitf(levelPionTrace, format, args) }
func (l pionLogger) Debug(msg string)                  { l.emit(levelPionTrace, msg) }
func (l pionLogger) Debugf(format string, args ...any) { l.emitf(levelPionTrace, format, args) }
func (l pionLogger) Info(msg string)                   { l.emit(slog.LevelDebug, msg) }
func (l pionLogger) Infof(format string, args ...any)  { l.emitf(slog.LevelDebug, format, args) }
func (l pionLogger) Warn(msg string)                   { l.emit(slog.LevelInfo, msg) }
func (l pionLogger) Warnf(format string, args ...any)  { l.emitf(slog.LevelInfo, format, args) }
func (l pionLogger) Error(msg string)                  { l.emit(slog.LevelWarn, msg) }
func (l pionLogger) Errorf(format string, args ...any) { l.emitf(slog.LevelWarn, format, args) }
