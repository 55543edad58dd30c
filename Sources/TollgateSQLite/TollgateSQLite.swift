// The SQLite store: one file that holds every service's state, over the domain's types and store
// protocols (TollgateCore). An app imports it through `Tollgate`, the one umbrella.
import TollgateCore
