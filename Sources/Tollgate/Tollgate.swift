// Tollgate's services work over the store's operations; an app that imports Tollgate gets the
// store's public types (SQLiteStore, PacificDay, the clocks) without a second import.
@_exported import TollgateStore
