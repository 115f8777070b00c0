#define APP_TTL 3s
