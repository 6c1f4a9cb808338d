package sandbox

// SetBeforeOpen lets a test act between a path's check and its open.
func SetBeforeOpen(f func(rel string)) { beforeOpen = f }
