// The PostgreSQL store for fleets, over the domain's types and store protocols (TollgateCore).
import TollgateCore
