/** The prune job's lease (migration 0017_retention). */
export interface MaintenanceLeaseTable {
  /** The job's name, e.g. "prune". */
  job: string;
  /** The worker running it now. */
  holder: string;
  /** While in the future, no other worker starts a pass. */
  until: string;
}

export interface RetentionTables {
  maintenance_lease: MaintenanceLeaseTable;
}
