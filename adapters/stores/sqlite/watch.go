package sqlite

// Watch returns a channel that receives after each commit that appends to session,
// and a function to stop watching. Register before reading, so no commit is missed.
func (s *Store) Watch(session string) (<-chan struct{}, func()) { return s.watch.Watch(session) }
