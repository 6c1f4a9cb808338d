-- Which API key a sign-in was made with (its sha256, hex), so that a key taken out of
-- the server's keys ends the sign-ins made with it. Sign-ins from before carry none
-- and are refused: their people sign in again.
ALTER TABLE ui_sessions ADD COLUMN key_hash TEXT NOT NULL DEFAULT '';
