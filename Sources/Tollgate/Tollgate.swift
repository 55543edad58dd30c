// The one umbrella: an app that imports Tollgate gets the domain's types (records, store protocols,
// PacificDay, the clocks) and, with the package's default `SQLite` trait, the SQLite store, without
// a second import. The gate itself sees only the core's store protocols: built without the trait
// (`traits: []` where the package is depended on), it links no database, and an app runs it over
// PostgreSQL (TollgatePostgres) or its own storage.
@_exported import TollgateCore
#if SQLite
@_exported import TollgateSQLite
#endif
