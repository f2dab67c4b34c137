//! Streams: captured SSE streams replayed with pauses; text passes at once,
//! calls are held until checked, blocked calls never leak a fragment.
