int plain(int x) { return x + 1; }
