// The SQLite store works over the domain's types: a module that imports TollgateStore gets them
// (the records, the store protocols, PacificDay, the clocks) without a second import.
@_exported import TollgateCore
